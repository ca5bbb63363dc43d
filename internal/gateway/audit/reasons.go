package audit

import "github.com/mcp-catalog/operator/internal/argrules"

// The vocabulary of the gateway's records: what an audit record, an Event,
// a metric or a span may say of a request. One place, so that a reader of
// any of them finds every word here.

// Audit phases.
const (
	// PhaseDenied records a call refused by the gate; nothing was sent.
	PhaseDenied = "denied"
	// PhaseBefore records a call about to be sent. No record, no call.
	PhaseBefore = "before"
	// PhaseAfter records the outcome of a call that was sent.
	PhaseAfter = "after"
)

// Denial reasons, in the order the stages of a call check them. They
// appear in audit records, Events, metrics and the message the agent gets.
const (
	DenyNotServable = "NotServable"
	DenyForbidden   = "Forbidden"
	// DenyNotShared refuses a shared tool whose server the owner does not
	// share with the caller's namespace now (or that does not exist, or
	// whose McpSharedServer cannot be honoured). The agent is told no
	// more than for Forbidden.
	DenyNotShared         = "NotShared"
	DenyAboveCeiling      = "AboveDataClassCeiling"
	DenyApprovalDeclined  = "ApprovalDeclined"
	DenyApprovalNoChannel = "ApprovalUnavailable"
	// DenyApprovalPending records a call not made because it waits for a
	// person's decision on an McpCallApproval.
	DenyApprovalPending = "ApprovalPending"
	// DenyUpstreamAuthorization: a per-person server's call waits for the
	// person to authorize the server (the detail says why: NotAuthorized,
	// ConsentRefused, RefreshRevoked, Expired), or their token could not
	// be had (Unavailable, NotConfigured, ConsentDeclined).
	DenyUpstreamAuthorization = "UpstreamAuthorizationRequired"
	DenyAuditFailed           = "AuditUnavailable"
	// DenyGuardrail records a call the guardrail webhook refused, and
	// DenyGuardrailUnavailable one of a class that fails closed while it
	// gave no answer.
	DenyGuardrail            = "GuardrailRefused"
	DenyGuardrailUnavailable = "GuardrailUnavailable"
	// DenyWriteDown refuses a call the caller's read mark holds back
	// (McpAccessPolicy spec.writeDown): the detail is the mark's class.
	DenyWriteDown = "WriteDown"
)

// What the guardrail said (Record.Guardrail).
const (
	GuardrailAllowed     = "Allowed"
	GuardrailRefused     = "Refused"
	GuardrailReplaced    = "Replaced"
	GuardrailUnavailable = "Unavailable"
)

// Denial reasons of the rules stage: the argument rules' refusal kinds.
const (
	DenyFixedArgumentSent        = argrules.FixedArgumentSent
	DenyArgumentRuleFailed       = argrules.RuleFailed
	DenyArgumentRuleNotEvaluated = argrules.RuleNotEvaluated
)

// Details refine a denial reason.
const (
	// DetailAdmissionPolicyMissing refines ApprovalUnavailable: the
	// admission policy that keeps a caller from deciding its own approval
	// (the gateway's ApprovalPolicy), or a binding of it that denies, is
	// missing.
	DetailAdmissionPolicyMissing = "AdmissionPolicyMissing"
	// DetailNameTooLong refines NotServable: the name a shared tool would
	// have in the caller's namespace (mcps_<McpSharedServer>_<tool>) is
	// longer than toolname.MaxLocalNameLength, so it is not offered there.
	DetailNameTooLong = "NameTooLong"
	// DetailNotInSession refines NotServable: the tool is callable now, but
	// the session does not offer it yet (it was not told of the change
	// yet, or is not told of changes).
	DetailNotInSession = "NotInSession"
	// DetailOwnerNotServed refines NotServable: the tool is shared from a
	// namespace this gateway does not serve, so it cannot be decided here.
	DetailOwnerNotServed = "OwnerNamespaceNotServed"
)

// What a tool's server asked the calling agent during a call, and why a
// request was refused for the agent (docs/adr/064-interaction-relayed-under-policy.md).
const (
	// PhaseInteraction records a request of the server's during a call,
	// relayed to the calling agent or refused for it.
	PhaseInteraction = "interaction"

	InteractionElicitation = "Elicitation"
	InteractionSampling    = "Sampling"

	DecisionRelayed = "Relayed"
	DecisionRefused = "Refused"

	// RefusedSamplingNotAllowed: the tool's spec.interaction.sampling is
	// not true.
	RefusedSamplingNotAllowed = "SamplingNotAllowed"
	// RefusedFormNotAllowed: spec.interaction.formElicitation is Refused.
	RefusedFormNotAllowed = "FormElicitationNotAllowed"
	// RefusedSensitiveField: the form asks for a field the tool's policy
	// names sensitive, or one of format password.
	RefusedSensitiveField = "SensitiveField"
	// RefusedURLHostNotAllowed: the URL is not https, or its host is not
	// in spec.interaction.urlElicitationHosts.
	RefusedURLHostNotAllowed = "URLHostNotAllowed"
	// RefusedMalformedRequest: the request's params could not be read.
	RefusedMalformedRequest = "MalformedRequest"
	// RefusedNoChannel: the agent cannot be asked during the call (no
	// session kept by the gateway).
	RefusedNoChannel = "NoChannelToAgent"
	// RefusedTooManyWaiting: the agent could be asked only by holding the
	// call while it answers, and its caller, its namespace or the replica
	// already has as many calls waiting as the gateway holds.
	RefusedTooManyWaiting = "TooManyWaiting"
	// RefusedNotDeclared: a 2026-07-28 agent would be asked in a round
	// what its request did not declare it can answer (the elicitation
	// capability, or its URL mode, or sampling).
	RefusedNotDeclared = "NotDeclaredByAgent"
	// RefusedInspection: result inspection, applied to the request's text
	// with the caller's policies, refuses it (the record's inspection
	// fields say what was found), or would have changed a URL the user
	// would open. A request the guardrail webhook refuses is recorded
	// GuardrailRefused, one it could not be asked about while the class
	// fails closed GuardrailUnavailable, as calls are.
	RefusedInspection = "InspectionRefused"
)

// Outcomes of a call, as metrics and spans name them.
const (
	OutcomeSucceeded = "Succeeded"
	OutcomeToolError = "ToolError"
	OutcomeFailed    = "Failed"
	OutcomeDenied    = "Denied"
	// OutcomeInputRequired: the server asked the caller for input; the
	// caller answers by calling again (2026-07-28).
	OutcomeInputRequired = "InputRequired"
	// OutcomeTaskCreated: the call was task-augmented and the server made
	// a task; its end is recorded apart (PhaseTaskEnded).
	OutcomeTaskCreated = "TaskCreated"
	// OutcomeTaskEnded: a task was seen to end; the record's detail is
	// the status it ended in (completed, failed, cancelled).
	OutcomeTaskEnded = "TaskEnded"
)

// Tasks (docs/adr/066-tasks-through-the-gateway.md).
const (
	// PhaseTaskEnded records the end of a task made by a call, under the
	// call's id: its status, no values.
	PhaseTaskEnded = "taskEnded"
	// RefusedTasksLimited: the identity has as many tasks open on the
	// replica as it may.
	RefusedTasksLimited = "TasksLimited"
	// DetailTaskDefinitionChanged refines NotServable for a request about
	// a task: the tool's definition or server is not the one the task was
	// made with.
	DetailTaskDefinitionChanged = "TaskDefinitionChanged"
)

// Refusal reasons that only metrics and spans carry: the request was
// refused before it reached the MCP layer, or the gateway could not make
// up its mind. The others are the Deny reasons of the audit record.
const (
	// RefusedUnauthenticated: no bearer token, or one TokenReview refused.
	RefusedUnauthenticated = "Unauthenticated"
	// RefusedNewTokensThrottled: a token never seen to authenticate was
	// not reviewed, the reviews of such tokens being over their rate.
	RefusedNewTokensThrottled = "NewTokensThrottled"
	// RefusedRateLimited: a token repeated past its failed
	// authentications, or an identity over its request budget.
	RefusedRateLimited = "RateLimited"
	// RefusedBytesLimited: a ServiceAccount or namespace was answered more
	// bytes than its budget allows, and is refused until the debt is
	// repaid.
	RefusedBytesLimited = "BytesLimited"
	// RefusedConcurrencyLimited: a ServiceAccount or namespace had as many
	// requests in flight as its budget allows.
	RefusedConcurrencyLimited = "ConcurrencyLimited"
	// RefusedBytesInFlight: the caller's namespace (or the replica) held as
	// many request bytes as it may at once.
	RefusedBytesInFlight = "BytesInFlight"
	// RefusedTooLarge: a request's body was larger than the gateway
	// accepts.
	RefusedTooLarge = "TooLarge"
	// RefusedNamespaceNotServed: the caller's namespace is not one this
	// gateway serves; the request was answered 421 before any work.
	RefusedNamespaceNotServed = "NamespaceNotServed"
	// RefusedDecisionFailed: reading policies, approvals or keys failed;
	// the agent is told to try again.
	RefusedDecisionFailed = "DecisionFailed"
	// RefusedInvalidArguments: the arguments are not a JSON object.
	RefusedInvalidArguments = "InvalidArguments"
	// RefusedInvalidRequest: the request was answered with a protocol
	// error before the gateway decided (arguments that fail the tool's
	// input schema, say).
	RefusedInvalidRequest = "InvalidRequest"
)
