--[[
  One step of a deadlock walk, on the lock's own slot: whether a waiter still waits here, and
  whose live grants it waits for. Changes nothing.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data (see includes/state)

  ARGV[1] waiter id
  ARGV[2] its owner    its identity (owner, else its wait-as): a holder with it is no edge

  Returns {waiting, queued at, holder owner...}: waiting 1 when the waiter is queued with a live
  entry and not yet served (else 0, and nothing more); when it was queued (ms, this slot's TIME;
  0 for a record written before it was kept); the owners of the lock's live, not abandoned
  grants, each once (a grant's owner, else its wait-as), without '' (a holder without either
  takes no part)
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey = KEYS[1], KEYS[2], KEYS[3]
local waiterId, waiterOwner = ARGV[1], ARGV[2]

local waiter = loadRecord('w:' .. waiterId)
if not (waiterAlive(waiter) and waiter.g == 0 and redis.call('ZSCORE', queueKey, waiterId)) then return { 0 } end
local reply, seen = { 1, waiter.q or 0 }, {}
for _, token in ipairs(redis.call('ZRANGEBYSCORE', holdersKey, '(' .. now, '+inf')) do
  local grant = loadRecord('g:' .. token)
  local who = grant and grant.a ~= 1 and (grant.o ~= '' and grant.o or grant.w or '') or ''
  if who ~= '' and who ~= waiterOwner and not seen[who] then
    seen[who] = true
    reply[#reply + 1] = who
  end
end
return reply
