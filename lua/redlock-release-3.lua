--[[
  Redlock, on one node: compare-and-delete of a grant's vote, and a wake-up for waiters.

  KEYS[1] lease (see redlock-acquire-2)
  KEYS[2] channel     waiters on any server listen here
  KEYS[3] released    remembers the released token as long as its lease would have lasted, so
                      that the server renewing it for a Hold can tell "released" from "expired"

  ARGV[1] token

  Returns
    {1, holdId}   released here; holdId: the Hold stream's hold it was ('' for Acquire)
    {0}           the token held nothing here
]]
local leaseKey, channel, releasedKey = KEYS[1], KEYS[2], KEYS[3]
local token = ARGV[1]

local vote = redis.call('HMGET', leaseKey, 't', 'h')
if vote[1] ~= token then return { 0 } end
local left = redis.call('PTTL', leaseKey)
redis.call('DEL', leaseKey)
if left > 0 then redis.call('SET', releasedKey, token, 'PX', left) end
redis.call('PUBLISH', channel, 'released')
return { 1, vote[2] or '' }
