"""What users see: progress and summaries, failure reasons, reports and run listings."""
