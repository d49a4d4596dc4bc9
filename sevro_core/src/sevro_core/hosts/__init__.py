"""What every agent-CLI host shares: the host skeleton pieces and skill activation evidence."""
