"""Outputs: the grades CSV and plot, the LMS import files, the pages, the feedback bundle, the log."""
