"""Results: the run record, the SQLite store, run folders and atomic writes, selectors, what each metric means."""
