--[[
  Redlock, on one of N independent masters: takes this node's vote for a grant when nobody
  holds the lock here, and reads the highest fencing token this node has seen, so that the
  grant's token can exceed every token a majority has seen (src/redlock/store.ts).

  KEYS[1] lease    hash {t = token, o = owner, l = lease ms, h = hold id, f = fencing token once
                   written}; expires with the lease
  KEYS[2] fence    the highest fencing token written on this node for the lock

  ARGV[1] token    the new grant's secret token
  ARGV[2] ttl ms
  ARGV[3] owner
  ARGV[4] hold id  the Hold stream's hold ('' for Acquire): a Release of the token names it back

  Returns
    {1, latestFence, nowUs}      this node's vote: the lease is set here
    {0, latestFence, leaseLeft, holderOwner}   someone holds it here: no vote
]]
local leaseKey, fenceKey = KEYS[1], KEYS[2]
local token, ttl, owner, holdId = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4] or ''

--- @include "includes/clock"

local latest = redis.call('GET', fenceKey) or '0'
if redis.call('EXISTS', leaseKey) == 1 then
  return { 0, latest, redis.call('PTTL', leaseKey), redis.call('HGET', leaseKey, 'o') or '' }
end
redis.call('HSET', leaseKey, 't', token, 'o', owner, 'l', ttl, 'h', holdId)
redis.call('PEXPIRE', leaseKey, ttl)
return { 1, latest, string.format('%.0f', nowUs) }
