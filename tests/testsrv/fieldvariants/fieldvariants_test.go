package fieldvariants

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

type inner struct {
	On  bool
	Tag string
}

type outer struct {
	Name    string
	Count   int
	Inner   *inner
	Flat    inner
	Labels  map[string]string
	List    []string
	Any     any
	private string
	Ignored string `json:"-"`
}

func TestEveryFieldGetsItsOwnVariant(t *testing.T) {
	base := outer{Name: "a", Inner: &inner{Tag: "t"}, Labels: map[string]string{"x": "y"}}
	got := Of(base, "o", "o.Flat.Tag")
	var paths []string
	for p, v := range got {
		paths = append(paths, p)
		require.False(t, reflect.DeepEqual(base, v), "%s changed nothing", p)
	}
	require.ElementsMatch(t, []string{"o.Name", "o.Count", "o.Inner.On", "o.Inner.Tag", "o.Flat.On", "o.Labels", "o.List", "o.Any"}, paths)
	require.Equal(t, "t", base.Inner.Tag, "the base is never changed through a pointer it shares")
	require.Len(t, base.Labels, 1)
	require.Equal(t, "tx", got["o.Inner.Tag"].(outer).Inner.Tag)
	require.False(t, got["o.Inner.On"].(outer).Inner.On == base.Inner.On)
}
