package searchattr

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type fakeOperator struct {
	have   map[string]enumspb.IndexedValueType
	addErr error
	added  map[string]enumspb.IndexedValueType
}

func (f *fakeOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest) (map[string]enumspb.IndexedValueType, error) {
	return f.have, nil
}

func (f *fakeOperator) AddSearchAttributes(_ context.Context, in *operatorservice.AddSearchAttributesRequest) error {
	if f.addErr != nil {
		return f.addErr
	}
	f.added = in.SearchAttributes
	return nil
}

var want = map[string]string{"FlotillaRepo": "Keyword", "FlotillaHasError": "Bool"}

func TestEnsureCreatesOnlyWhatIsMissing(t *testing.T) {
	op := &fakeOperator{have: map[string]enumspb.IndexedValueType{"FlotillaRepo": enumspb.INDEXED_VALUE_TYPE_KEYWORD}}
	created, err := Ensure(context.Background(), op, "prod", want)
	require.NoError(t, err)
	require.Equal(t, []string{"FlotillaHasError"}, created)
	require.Equal(t, map[string]enumspb.IndexedValueType{"FlotillaHasError": enumspb.INDEXED_VALUE_TYPE_BOOL}, op.added)

	op = &fakeOperator{have: map[string]enumspb.IndexedValueType{"FlotillaRepo": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "FlotillaHasError": enumspb.INDEXED_VALUE_TYPE_BOOL}}
	created, err = Ensure(context.Background(), op, "prod", want)
	require.NoError(t, err)
	require.Empty(t, created)
	require.Nil(t, op.added, "nothing to create, nothing asked")
}

func TestAnAttributeOfAnotherTypeIsAConflictNamingIt(t *testing.T) {
	op := &fakeOperator{have: map[string]enumspb.IndexedValueType{"FlotillaRepo": enumspb.INDEXED_VALUE_TYPE_INT}}
	_, err := Ensure(context.Background(), op, "prod", want)
	var conflict *ConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "FlotillaRepo", conflict.Name)
	require.Contains(t, err.Error(), `namespace "prod": search attribute FlotillaRepo exists with type Int, Flotilla needs Keyword`)
	require.Nil(t, op.added, "nothing is created beside a conflict")
}

func TestWhereTheWorkerMayNotCreateThemItSaysWhatToRun(t *testing.T) {
	op := &fakeOperator{have: map[string]enumspb.IndexedValueType{}, addErr: status.Error(codes.PermissionDenied, "Request unauthorized.")}
	_, err := Ensure(context.Background(), op, "prod", want)
	var missing *MissingError
	require.True(t, errors.As(err, &missing))
	require.Contains(t, err.Error(), "lacks Flotilla's search attributes FlotillaHasError, FlotillaRepo")
	require.Contains(t, err.Error(), "temporal operator search-attribute create --namespace prod --name FlotillaHasError --type Bool")
	require.Contains(t, err.Error(), "temporal operator search-attribute create --namespace prod --name FlotillaRepo --type Keyword")

	op = &fakeOperator{have: map[string]enumspb.IndexedValueType{}, addErr: status.Error(codes.AlreadyExists, "exists")}
	_, err = Ensure(context.Background(), op, "prod", want)
	require.NoError(t, err, "another worker created them first")
}
