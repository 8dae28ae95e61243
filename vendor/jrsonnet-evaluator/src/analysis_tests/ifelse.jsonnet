if true then 1 else 2
