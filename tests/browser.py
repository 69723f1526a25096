"""A page as a person sees it: the report opened in a real headless Chromium at a given width, measured from
inside the page (its scroll width, where each figure's text and legend lie) and photographed."""

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
PROBE = """<script>
window.addEventListener('load', function () {
  var page = document.documentElement, out = {width: window.innerWidth, scrollWidth: page.scrollWidth,
                                              figures: 0, outside: [], overlaps: [],
                                              legends: 0, hover: 0};
  document.querySelectorAll('svg.figure').forEach(function (svg) {
    out.figures += 1;
    var box = svg.getBoundingClientRect();
    svg.querySelectorAll('text, .legend').forEach(function (e) {
      var r = e.getBoundingClientRect();
      if (e.classList.contains('legend')) out.legends += 1;
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
        out.outside.push((svg.getAttribute('aria-label') || '?') + ': ' + (e.textContent || '').slice(0, 60));
    });
    out.hover += svg.querySelectorAll('title').length;
    var texts = Array.prototype.filter.call(svg.querySelectorAll('text'), function (e) {
      return (e.textContent || '').trim() && e.getBoundingClientRect().width > 0;
    });
    for (var i = 0; i < texts.length; i++) {
      var a = texts[i].getBoundingClientRect();
      for (var j = i + 1; j < texts.length; j++) {
        var b = texts[j].getBoundingClientRect();
        var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 2)  // glyph boxes include leading: a pixel or two of touching lines is not an overlap
          out.overlaps.push((svg.getAttribute('aria-label') || '?') + ': ' + texts[i].textContent.slice(0, 40) +
                            ' / ' + texts[j].textContent.slice(0, 40));
      }
    }
  });
  out.summaries = Array.prototype.map.call(document.querySelectorAll('table.summary'),
                                          function (t) { return t.getBoundingClientRect().right; });
  out.anchors = Array.prototype.filter.call(document.querySelectorAll('nav.contents a'), function (a) {
    return document.querySelector(a.getAttribute('href'));
  }).length;
  out.links = document.querySelectorAll('nav.contents a').length;
  var pre = document.createElement('pre'); pre.id = 'simflow-probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _run(args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="simflow-chromium-") as profile:
        return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=timeout)


def measure(page: Path, width: int = 1280) -> dict:
    """Open a copy of `page` with the probe and read what it measured."""
    probed = page.with_name(page.stem + ".probe.html")
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    try:
        proc = _run([f"--window-size={width},900", "--virtual-time-budget=3000", "--dump-dom", probed.as_uri()])
    finally:
        probed.unlink()
    found = re.search(r'<pre id="simflow-probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                      .replace("&gt;", ">"))


def screenshot(page: Path, target: Path, width: int = 1280, height: int = 2400) -> Path:
    _run([f"--window-size={width},{height}", f"--screenshot={target}", page.as_uri()])
    assert target.is_file() and target.read_bytes().startswith(b"\x89PNG"), target
    return target
