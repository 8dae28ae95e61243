local x = 1; local x = 2; x
