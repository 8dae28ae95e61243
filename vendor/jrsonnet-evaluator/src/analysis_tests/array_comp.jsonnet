[x * 2 for x in [1, 2, 3] if x > 1]
