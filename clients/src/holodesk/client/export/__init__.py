"""`holodesk export`: recordings to an SFT dataset (JSONL or Parquet)."""
