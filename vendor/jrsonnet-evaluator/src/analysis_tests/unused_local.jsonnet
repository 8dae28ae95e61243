local unused = 1; 2
