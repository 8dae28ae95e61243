local outer = 1; local inner = 10 + 20; outer + inner
