local x = 1; x + 2
