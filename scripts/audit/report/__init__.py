"""What report.md must show and how it is read: the expected tables and lines (report_facts; an opening's
in report_opening), and the matching of the numbers, verdicts and labels it shows (report_numbers)."""

__all__ = ['report_facts', 'report_numbers', 'report_opening']
