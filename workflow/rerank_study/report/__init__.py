"""What a run shows a reader: the markdown report and its HTML page, the calibration section,
the paper tables, the query browser, the ir_metadata sidecars and the cross-study table."""

__all__ = ['cross_table', 'paper_tables', 'report', 'report_browser', 'report_browser_page',
    'report_calibration', 'report_html', 'run_metadata']
