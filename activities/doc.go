// Package activities holds everything custos does with side effects: the model
// call, the tools, hook runners, settings loading, the transcript and audit
// sinks. What the workflow and the activities agree on (names, requests,
// results, shared rules) is in activities/api, which the workflow imports
// instead of this package.
package activities
