-- Argo CD health of an McpAccessPolicy (mcp.catalog.dev), from the
-- conditions kstatus reads: Ready=True is Healthy, Stalled=True (a spec the
-- operator found invalid) is Degraded, no verdict yet or a spec not yet
-- observed is Progressing.
hs = {}
local function progressing(msg)
  hs.status = "Progressing"
  hs.message = msg
  return hs
end
if obj.status == nil or obj.status.conditions == nil then
  return progressing("waiting for the operator to report status")
end
local generation = obj.metadata.generation
local observed = obj.status.observedGeneration
if generation ~= nil and observed ~= nil and observed < generation then
  return progressing("waiting for the operator to observe generation " .. generation)
end
local ready, reconciling, stalled
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Ready" then
    ready = c
  elseif c.type == "Reconciling" and c.status == "True" then
    reconciling = c
  elseif c.type == "Stalled" and c.status == "True" then
    stalled = c
  end
end
if stalled ~= nil then
  hs.status = "Degraded"
  hs.message = (stalled.reason or "Stalled") .. ": " .. (stalled.message or "")
  return hs
end
if reconciling ~= nil then
  return progressing(reconciling.message or "work is in progress")
end
if ready == nil or ready.status == "Unknown" then
  return progressing("Ready has not been determined yet")
end
if ready.status == "True" then
  hs.status = "Healthy"
else
  hs.status = "Degraded"
end
hs.message = (ready.reason or "") .. ": " .. (ready.message or "")
return hs
