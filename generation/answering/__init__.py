"""Answering AmbigDocs questions: the runner (`ambigdocs answer`) and dense retrieval."""
