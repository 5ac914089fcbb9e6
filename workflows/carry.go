package workflows

import (
	"github.com/flotilla-gitops/flotilla/api"

	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
)

// A GitRepo's state across continue-as-new holds a status per cluster and bundle. At 1,000 clusters of ten
// bundles its JSON is about 3 MB (more with errors), over Temporal's 2 MB payload limit: the GitRepo could
// never continue as new and would wedge. The state is repetitive (the same bundle names, states and keys
// for every cluster), so it travels gzip-compressed, a tenth of its size or less. Should it still be too
// large (thousands of distinct error messages), messages are shortened, then bundle details dropped and
// every cluster's desired state handed over again, which makes each one report afresh.

// maxCarryBytes bounds the packed state, far under the 2 MB limit so the rest of the input and a margin fit.
const maxCarryBytes = 1 << 20

// carryMessageLimit is how long a carried message may stay when the state must be trimmed.
const carryMessageLimit = 200

// packCarry compresses the carried state, trimming it if it would not fit; it reports whether it trimmed.
//
//workflowcheck:ignore
func packCarry(c GitRepoCarry) ([]byte, bool) {
	z := gzipJSON(c)
	if len(z) <= maxCarryBytes {
		return z, false
	}
	c.Clusters = trimStatuses(c.Clusters, false)
	if z = gzipJSON(c); len(z) <= maxCarryBytes {
		return z, true
	}
	c.Clusters = trimStatuses(c.Clusters, true)
	c.Delivered = nil
	return gzipJSON(c), true
}

// unpackCarry reverses packCarry.
//
//workflowcheck:ignore
func unpackCarry(z []byte) (GitRepoCarry, error) {
	var c GitRepoCarry
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return c, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("decoding: %w", err)
	}
	return c, nil
}

//workflowcheck:ignore
func gzipJSON(v any) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_ = json.NewEncoder(w).Encode(v)
	_ = w.Close()
	return buf.Bytes()
}

// trimStatuses shortens carried messages, and with dropBundles keeps only each cluster's own summary.
func trimStatuses(in map[string]api.ClusterStatus, dropBundles bool) map[string]api.ClusterStatus {
	out := make(map[string]api.ClusterStatus, len(in))
	for name, cs := range in { //workflowcheck:ignore building a map, order does not matter
		cs.Message = shorten(cs.Message)
		if dropBundles {
			cs.Bundles = nil
		} else {
			bs := make([]api.BundleStatus, len(cs.Bundles))
			for i, b := range cs.Bundles {
				b.Message = shorten(b.Message)
				bs[i] = b
			}
			cs.Bundles = bs
		}
		out[name] = cs
	}
	return out
}

func shorten(s string) string {
	if len(s) <= carryMessageLimit {
		return s
	}
	return s[:carryMessageLimit] + "…"
}
