"""`ambigdocs evaluate`: scores, tables, plots and reports over results files."""
