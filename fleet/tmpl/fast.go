package tmpl

// Most functions templates call take and return strings. For those, bind returns a typed function that
// calls the original directly: text/template's reflective call is then the only one, instead of a
// second through reflect.MakeFunc, which took most of the time of a loop over a few hundred elements.
// The checks are the same as bound.call's.

func (f *bound) bindTyped(b *budget) (any, bool) {
	if f.guard != nil {
		return nil, false
	}
	switch fn := f.fn.Interface().(type) {
	case func(string) string:
		return func(s string) (_ string, err error) {
			defer recovered(&err)
			return f.text(b, fn(s))
		}, true
	case func(string, string) string:
		return func(a, s string) (_ string, err error) {
			defer recovered(&err)
			return f.text(b, fn(a, s))
		}, true
	case func(int, string) string:
		return func(n int, s string) (_ string, err error) {
			defer recovered(&err)
			return f.text(b, fn(n, s))
		}, true
	case func(any) string:
		return func(v any) (_ string, err error) {
			defer recovered(&err)
			return f.text(b, fn(v))
		}, true
	case func(...any) string:
		return func(vs ...any) (_ string, err error) {
			defer recovered(&err)
			if err := f.arguments(b, vs); err != nil {
				return "", err
			}
			return f.text(b, fn(vs...))
		}, true
	case func(any, ...any) any:
		return func(v any, vs ...any) (_ any, err error) {
			defer recovered(&err)
			if err := f.arguments(b, append([]any{v}, vs...)); err != nil {
				return nil, err
			}
			return f.value(b, fn(v, vs...))
		}, true
	}
	return nil, false
}

// arguments charges the call and refuses variadic arguments that add up to more than the limit.
func (f *bound) arguments(b *budget, vs []any) error {
	if err := b.spend(f.name, 1); err != nil {
		return err
	}
	if e := measureAll(vs, MaxOutput); e.size > MaxOutput {
		return overLimit(f.name, "its arguments add up to more than %s", valueLimit)
	}
	return nil
}

func (f *bound) text(b *budget, s string) (string, error) {
	if !f.typ.IsVariadic() {
		if err := b.spend(f.name, 1); err != nil {
			return "", err
		}
	}
	if len(s) > MaxOutput {
		return "", overLimit(f.name, "%d characters is over %s", len(s), outputLimit)
	}
	return s, b.spendBytes(f.name, len(s))
}

func (f *bound) value(b *budget, v any) (any, error) {
	size, err := checkValue(f.name, v)
	if err != nil {
		return nil, err
	}
	return v, b.spendBytes(f.name, size)
}
