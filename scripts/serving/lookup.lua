-- sysbench script of Sieve's served point lookup: one server-side prepared statement
-- (`SIEVE_LOOKUP`, default `select c1 from t10b where c2 = ?`) per connection, executed with a
-- key drawn uniformly from the lines of `SIEVE_KEYS`. An event is one lookup. `SIEVE_SET`, if
-- given, holds statements (split at `;`) run first on each connection (`set sieve.short_path =
-- false; set sieve.data_cache = false` for the baseline).
local sql = os.getenv("SIEVE_LOOKUP") or "select c1 from t10b where c2 = ?"
local setting = os.getenv("SIEVE_SET")
-- `SIEVE_TEXT`, if given, is a text statement with `%s` for the key, sent as a text query
-- instead of executing the prepared statement.
local text = os.getenv("SIEVE_TEXT")
if text == "" then
  text = nil
end
local keys_file = assert(os.getenv("SIEVE_KEYS"), "SIEVE_KEYS names the file of keys")

function thread_init()
  keys = {}
  for line in io.lines(keys_file) do
    keys[#keys + 1] = line
  end
  assert(#keys > 0, "no keys in " .. keys_file)
  drv = sysbench.sql.driver()
  con = drv:connect()
  for statement in string.gmatch(setting or "", "[^;]+") do
    if statement:match("%S") then
      con:query(statement)
    end
  end
  if text then
    return
  end
  stmt = con:prepare(sql)
  param = stmt:bind_create(sysbench.sql.type.VARCHAR, 64)
  stmt:bind_param(param)
end

function event()
  local key = keys[math.random(#keys)]
  if text then
    con:query(string.format(text, key))
    return
  end
  param:set(key)
  stmt:execute()
end

function thread_done()
  if stmt then
    stmt:close()
  end
  con:disconnect()
end
