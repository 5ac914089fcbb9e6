// Package zaplog adapts zap to the Temporal SDK's logger interface, so SDK, workflow and activity logs
// share one structured stream.
package zaplog

import (
	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New builds the process logger: JSON in production, readable console output when dev is true.
func New(level string, dev bool) (*zap.Logger, error) {
	var cfg zap.Config
	if dev {
		cfg = zap.NewDevelopmentConfig()
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
	} else {
		cfg = zap.NewProductionConfig()
	}
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.DisableStacktrace = true
	return cfg.Build()
}

// Adapter implements go.temporal.io/sdk/log.Logger and log.WithLogger.
type Adapter struct{ z *zap.Logger }

// NewAdapter wraps z for the Temporal SDK.
func NewAdapter(z *zap.Logger) *Adapter { return &Adapter{z: z.WithOptions(zap.AddCallerSkip(1))} }

func fields(keyvals []any) []zap.Field {
	fs := make([]zap.Field, 0, len(keyvals)/2)
	for i := 0; i+1 < len(keyvals); i += 2 {
		k, ok := keyvals[i].(string)
		if !ok {
			k = "key"
		}
		fs = append(fs, zap.Any(k, keyvals[i+1]))
	}
	return fs
}

func (a *Adapter) Debug(msg string, keyvals ...any) { a.z.Debug(msg, fields(keyvals)...) }
func (a *Adapter) Info(msg string, keyvals ...any)  { a.z.Info(msg, fields(keyvals)...) }
func (a *Adapter) Warn(msg string, keyvals ...any)  { a.z.Warn(msg, fields(keyvals)...) }
func (a *Adapter) Error(msg string, keyvals ...any) { a.z.Error(msg, fields(keyvals)...) }

// With returns a logger that adds keyvals to every entry.
func (a *Adapter) With(keyvals ...any) log.Logger { return &Adapter{z: a.z.With(fields(keyvals)...)} }

var _ log.WithLogger = (*Adapter)(nil)
