package bundle

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// checkName refuses a fleet.yaml name that cannot be the value of the flotilla.dev/bundle label every
// object and release of the bundle carries.
func checkName(name string) error {
	if name == "" || len(validation.IsValidLabelValue(name)) == 0 {
		return nil
	}
	return fmt.Errorf("name %q: must be a Kubernetes label value: at most %d characters, letters, digits, "+
		"'-', '_' or '.', starting and ending with a letter or digit", name, validation.LabelValueMaxLength)
}
