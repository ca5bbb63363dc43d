-- Argo CD health of an McpTool (mcp.catalog.dev), from the conditions
-- kstatus reads. A disabled tool (Ready=False, reason Disabled) is Suspended:
-- it is not served by choice and waits for spec.enabled. Any other
-- Ready=False (definition changed and awaiting approval, server not Ready,
-- removed from the server) is Degraded: the tool is not served.
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
if ready.status == "False" and ready.reason == "Disabled" then
  hs.status = "Suspended"
  hs.message = ready.message or "the tool is not enabled"
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
else
  hs.status = "Degraded"
end
hs.message = (ready.reason or "") .. ": " .. (ready.message or "")
return hs
