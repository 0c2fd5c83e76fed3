package web

// RefusalsAudited is refusalsAudited, for the tests of package web_test.
const RefusalsAudited = refusalsAudited
