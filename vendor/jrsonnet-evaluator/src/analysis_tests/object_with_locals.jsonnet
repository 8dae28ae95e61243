{
  local helper = 10,
  a: helper,
  b: helper * 2,
}
