package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// newLogger builds the zap logger and routes client-go's klog into it.
func newLogger(level, format string, out io.Writer) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch format {
	case "json":
		enc = zapcore.NewJSONEncoder(encCfg)
	case "console":
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	default:
		return nil, fmt.Errorf("--log-format %q: want json or console", format)
	}
	// Sampling rate-limits repeats of the same message (100 a second, then 1 in 100).
	core := zapcore.NewSamplerWithOptions(zapcore.NewCore(enc, zapcore.AddSync(out), lvl), 1e9, 100, 100)
	log := zap.New(core)
	klog.SetLogger(zapr.NewLogger(log.Named("client-go")))
	// vishvananda/netlink prints header attributes it does not know (IPSET_ATTR_INITVAL
	// and _BUCKETSIZE of 6.x hash sets) with the standard logger on every set listing:
	// keep them, at debug level, in the structured log.
	if _, err := zap.RedirectStdLogAt(log.Named("netlink"), zapcore.DebugLevel); err != nil {
		return nil, err
	}
	return log, nil
}

// logBanner logs the version banner at start.
func logBanner(log *zap.Logger) {
	goVersion := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
	}
	log.Info("Starting ipvs-proxier", zap.String("version", version), zap.String("go", goVersion))
}
