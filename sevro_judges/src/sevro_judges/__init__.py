"""sevro's judges: prompts and reply parsers for the advisory reviewer and comparator rubrics."""
