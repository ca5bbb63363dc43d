-- Argo CD health of an McpAccessPolicy (mcp.catalog.dev). The gateway reads
-- the policy on every request and no controller reconciles it, so it has no
-- conditions: it is Healthy as soon as it exists, unless a status records an
-- older generation than the spec.
hs = {}
if obj.status ~= nil and obj.status.observedGeneration ~= nil and obj.metadata.generation ~= nil
    and obj.status.observedGeneration < obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "waiting for generation " .. obj.metadata.generation .. " to be observed"
  return hs
end
hs.status = "Healthy"
hs.message = "the gateway applies the policy to every request"
return hs
