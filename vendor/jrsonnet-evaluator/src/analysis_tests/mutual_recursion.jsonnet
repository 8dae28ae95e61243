local a = b, b = 1; a + 2
