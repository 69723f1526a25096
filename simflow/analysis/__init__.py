"""Reading results: diff and compare, explain, correlation, reports."""
