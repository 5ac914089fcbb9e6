// Package searchattr makes sure a Temporal namespace has the custom search attributes Flotilla's workflows
// write. Without them every workflow task fails with BadSearchAttributes and nothing says why, so the
// worker checks at start: it creates what is missing where it may, and otherwise stops with the commands
// an operator runs (a Temporal Cloud namespace, or a server where the worker's identity may not).
package searchattr

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Operator is the part of Temporal's OperatorService this package uses.
type Operator interface {
	ListSearchAttributes(ctx context.Context, in *operatorservice.ListSearchAttributesRequest) (map[string]enumspb.IndexedValueType, error)
	AddSearchAttributes(ctx context.Context, in *operatorservice.AddSearchAttributesRequest) error
}

// ConflictError is an attribute that exists with another type: Flotilla cannot use it, and creating it
// again is impossible, so an operator must decide (another namespace, or remove the attribute).
type ConflictError struct {
	Namespace, Name, Want, Have string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("namespace %q: search attribute %s exists with type %s, Flotilla needs %s: use another namespace or remove the attribute",
		e.Namespace, e.Name, e.Have, e.Want)
}

// MissingError lists attributes the namespace lacks and that could not be created from here.
type MissingError struct {
	Namespace string
	Missing   map[string]string // name → type
	Cause     error
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("namespace %q lacks Flotilla's search attributes %s and they could not be created (%v); create them with:\n%s",
		e.Namespace, strings.Join(slices.Sorted(maps.Keys(e.Missing)), ", "), e.Cause, strings.TrimRight(Commands(e.Namespace, e.Missing), "\n"))
}

// Ensure makes sure every attribute in want (name → type name, as the Temporal CLI spells it: Keyword,
// Bool, …) exists in the namespace with that type, creating the missing ones. It is idempotent.
func Ensure(ctx context.Context, op Operator, namespace string, want map[string]string) (created []string, err error) {
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("namespace %q: cannot list search attributes (%w); make sure these exist:\n%s", namespace, err, Commands(namespace, want))
	}
	missing, err := compare(namespace, have, want)
	if err != nil {
		return nil, err
	}
	if len(missing) == 0 {
		return nil, nil
	}
	add := map[string]enumspb.IndexedValueType{}
	for name, typ := range missing {
		add[name], _ = valueType(typ) // compare checked every type
	}
	err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: add})
	if status.Code(err) == codes.AlreadyExists {
		err = nil // another worker created them first
	}
	if err != nil {
		return nil, &MissingError{Namespace: namespace, Missing: missing, Cause: err}
	}
	return slices.Sorted(maps.Keys(missing)), nil
}

// Commands are the commands that create the attributes, for a message to an operator.
func Commands(namespace string, want map[string]string) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(want)) {
		fmt.Fprintf(&b, "  temporal operator search-attribute create --namespace %s --name %s --type %s\n", namespace, n, want[n])
	}
	return b.String()
}

// compare returns the wanted attributes the namespace lacks (name → type), or an error naming those that
// exist with another type, or a wanted type that is not one.
func compare(namespace string, have map[string]enumspb.IndexedValueType, want map[string]string) (map[string]string, error) {
	missing := map[string]string{}
	var conflicts []error
	for _, name := range slices.Sorted(maps.Keys(want)) {
		t, err := valueType(want[name])
		if err != nil {
			return nil, fmt.Errorf("search attribute %s: %w", name, err)
		}
		got, ok := have[name]
		switch {
		case !ok:
			missing[name] = want[name]
		case got != t:
			conflicts = append(conflicts, &ConflictError{Namespace: namespace, Name: name, Want: want[name], Have: got.String()})
		}
	}
	return missing, errors.Join(conflicts...)
}

func valueType(name string) (enumspb.IndexedValueType, error) {
	t, err := enumspb.IndexedValueTypeFromString(name)
	if err != nil || t == enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED {
		return 0, fmt.Errorf("unknown type %q", name)
	}
	return t, nil
}

// Service adapts Temporal's OperatorService client (client.Client.OperatorService()).
type Service struct {
	Client operatorservice.OperatorServiceClient
}

// ListSearchAttributes returns the namespace's custom attributes and their types.
func (s Service) ListSearchAttributes(ctx context.Context, in *operatorservice.ListSearchAttributesRequest) (map[string]enumspb.IndexedValueType, error) {
	resp, err := s.Client.ListSearchAttributes(ctx, in)
	if err != nil {
		return nil, err
	}
	return resp.GetCustomAttributes(), nil
}

// AddSearchAttributes creates attributes.
func (s Service) AddSearchAttributes(ctx context.Context, in *operatorservice.AddSearchAttributesRequest) error {
	_, err := s.Client.AddSearchAttributes(ctx, in)
	return err
}

// Check returns an error naming the attributes the namespace lacks, with the commands that create them,
// for a client (the CLI) that must not create them itself. A server that does not let it list them is
// not an error here: the worker is the one that must be able to.
func Check(ctx context.Context, op Operator, namespace string, want map[string]string) error {
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil
	}
	missing, conflicts := compare(namespace, have, want)
	if len(missing) == 0 {
		return conflicts
	}
	// Both at once: an operator fixing the namespace needs the whole list, not one problem per attempt.
	return errors.Join(conflicts, fmt.Errorf("namespace %q lacks Flotilla's search attributes %s, so no GitRepo can run there: start flotilla-worker against it (it creates them), or create them with:\n%s",
		namespace, strings.Join(slices.Sorted(maps.Keys(missing)), ", "), strings.TrimRight(Commands(namespace, missing), "\n")))
}
