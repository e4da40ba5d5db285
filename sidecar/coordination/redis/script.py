"""The one Lua script through which every change to the store of record goes (redis/records.py):
Redis runs it whole, so the lead's check and the change cannot be told apart in time."""

# KEYS: the lead's holder record, its fence counter, the refusals' counter, the recently changed
# records, each record's digest, the revision a change expects (any key when none), then one key
# per applied id, then the operations' keys (`set`: the record and its revision; `append`: the
# record; `del`: the record and its revision; `copy`: the hash of the digests of hooks.json's
# copies by revision, the latest 1000 kept). ARGV: the caller's holder record and fence token
# ('' for a command, which leads nothing), the number of ids, how long an id is kept, how long
# a change is recent, the revision expected ('' for none), then (operation, value) pairs.
# Returns the new revision of each record set, in order; -1 for a refused lead, -2 for an id
# applied already, -3 for a record changed since it was read.
COMMIT = """
if redis.replicate_commands then redis.replicate_commands() end
if ARGV[1] ~= '' and (redis.call('get', KEYS[1]) ~= ARGV[1]
                      or redis.call('get', KEYS[2]) ~= ARGV[2]) then
  redis.call('incr', KEYS[3])
  return -1
end
if ARGV[6] ~= '' and (redis.call('get', KEYS[6]) or '0') ~= ARGV[6] then return -3 end
local ids = tonumber(ARGV[3])
for i = 1, ids do
  if redis.call('exists', KEYS[6 + i]) == 1 then return -2 end
end
local t = redis.call('time')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
for i = 1, ids do redis.call('set', KEYS[6 + i], '1', 'EX', ARGV[4]) end
local revisions = {}
local k = 7 + ids
for a = 7, #ARGV, 2 do
  local op, value = ARGV[a], ARGV[a + 1]
  if op == 'set' then
    redis.call('set', KEYS[k], value)
    table.insert(revisions, redis.call('incr', KEYS[k + 1]))
    redis.call('zadd', KEYS[4], now, KEYS[k])
    redis.call('hset', KEYS[5], KEYS[k], redis.sha1hex(value))
    k = k + 2
  elseif op == 'append' then
    redis.call('append', KEYS[k], value)
    redis.call('zadd', KEYS[4], now, KEYS[k])
    redis.call('hset', KEYS[5], KEYS[k], redis.sha1hex(redis.call('get', KEYS[k])))
    k = k + 1
  elseif op == 'del' then
    redis.call('del', KEYS[k], KEYS[k + 1])
    redis.call('zrem', KEYS[4], KEYS[k])
    redis.call('hdel', KEYS[5], KEYS[k])
    k = k + 2
  elseif op == 'copy' then
    local revision, digest = string.match(value, '^(%d+) (%x+)$')
    redis.call('hset', KEYS[k], revision, digest)
    redis.call('hdel', KEYS[k], tostring(tonumber(revision) - 1000))
    k = k + 1
  end
end
redis.call('zremrangebyscore', KEYS[4], '-inf', now - tonumber(ARGV[5]))
return revisions
"""
