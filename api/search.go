package api

// Search attributes Flotilla's workflows write, registered on the server before first use (an
// unregistered one wedges the workflow task). Visibility queries of the CLI, the webhook and the
// activities filter on them.
const (
	SearchAttrGitRepo  = "FlotillaGitRepo"
	SearchAttrCluster  = "FlotillaCluster"
	SearchAttrRepo     = "FlotillaRepo"
	SearchAttrCommit   = "FlotillaCommit"
	SearchAttrState    = "FlotillaState"
	SearchAttrReady    = "FlotillaReady"
	SearchAttrHasError = "FlotillaHasError"
)

// SearchAttributes maps each attribute to its type as the Temporal CLI spells it, for
// `temporal server start-dev --search-attribute` and `temporal operator search-attribute create`.
var SearchAttributes = map[string]string{
	SearchAttrGitRepo:  "Keyword",
	SearchAttrCluster:  "Keyword",
	SearchAttrRepo:     "Keyword",
	SearchAttrCommit:   "Keyword",
	SearchAttrState:    "Keyword",
	SearchAttrReady:    "Keyword",
	SearchAttrHasError: "Bool",
}
