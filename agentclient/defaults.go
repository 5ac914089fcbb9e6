package agentclient

import "time"

// Every default and timeout of the package, in one place.
const (
	// DefaultQPS and DefaultBurst replace client-go's 5/10, which throttle Helm applies of large charts.
	DefaultQPS   float32 = 50
	DefaultBurst         = 100

	// DefaultTimeout bounds Helm hooks and, when asked for, Helm's wait.
	DefaultTimeout = 5 * time.Minute
	// DefaultMaxHistory is the number of release revisions kept when the caller says 0.
	DefaultMaxHistory = 5

	// pingTimeout keeps a health probe of an unreachable cluster short.
	pingTimeout = 5 * time.Second

	// listPageSize pages the LIST calls of CheckRelease and ListReleases.
	listPageSize = 500
)

// userAgent names Flotilla in apiserver audit logs.
const userAgent = "flotilla-agentclient"
