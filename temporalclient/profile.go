package temporalclient

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/internal/atomicfile"
)

// ProfileName is the Temporal CLI profile `starter temporal-profile --write`
// writes: `temporal --profile custos workflow list` then reaches the
// embedded server.
const ProfileName = "custos"

// EmbeddedProfile is the Temporal client profile for the embedded server on
// address with the certificates f.
func EmbeddedProfile(address string, f devserver.TLSFiles) *envconfig.ClientConfigProfile {
	return &envconfig.ClientConfigProfile{
		Address:   address,
		Namespace: "default",
		TLS: &envconfig.ClientConfigTLS{
			ClientCertPath:   f.ClientCert,
			ClientKeyPath:    f.ClientKey,
			ServerCACertPath: f.CA,
			ServerName:       devserver.ServerName,
		},
	}
}

// ProfileFile is the Temporal CLI's configuration file: TEMPORAL_CONFIG_FILE,
// else the default of envconfig (and of the CLI).
func ProfileFile() string {
	if f := os.Getenv("TEMPORAL_CONFIG_FILE"); f != "" {
		return f
	}
	return envconfig.DefaultConfigFilePath()
}

// ProfileTOML renders p as profile name alone, for printing.
func ProfileTOML(name string, p *envconfig.ClientConfigProfile) (string, error) {
	conf := envconfig.ClientConfig{Profiles: map[string]*envconfig.ClientConfigProfile{name: p}}
	b, err := conf.ToTOML(envconfig.ClientConfigToTOMLOptions{})
	if err != nil {
		return "", fmt.Errorf("rendering profile %s: %w", name, err)
	}
	return string(b), nil
}

// WriteProfile sets profile name in the TOML file path, keeping its other
// profiles and the fields of theirs envconfig does not know. A file with
// settings outside profiles is left alone (error): rewriting it through
// envconfig would drop them.
func WriteProfile(path, name string, p *envconfig.ClientConfigProfile) error {
	if path == "" {
		return errors.New("no Temporal CLI config file path (set TEMPORAL_CONFIG_FILE)")
	}
	var conf envconfig.ClientConfig
	extra := map[string]map[string]any{}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("reading %s: %w", path, err)
	default:
		if err := conf.FromTOML(old, envconfig.ClientConfigFromTOMLOptions{AdditionalProfileFields: extra}); err != nil {
			return fmt.Errorf("%s is not a Temporal CLI config file custos can update: %w", path, err)
		}
		var strict envconfig.ClientConfig
		if err := strict.FromTOML(old, envconfig.ClientConfigFromTOMLOptions{Strict: true}); err != nil && !onlyProfileKeys(err) {
			return fmt.Errorf("%s holds settings custos would lose by rewriting it (%w); add the profile by hand", path, err)
		}
	}
	if conf.Profiles == nil {
		conf.Profiles = map[string]*envconfig.ClientConfigProfile{}
	}
	conf.Profiles[name] = p
	delete(extra, name) // the new profile replaces the old one whole
	b, err := conf.ToTOML(envconfig.ClientConfigToTOMLOptions{AdditionalProfileFields: extra})
	if err != nil {
		return fmt.Errorf("rendering %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	// Replaced whole, so the CLI never reads half a file; an existing
	// file keeps its mode.
	mode := os.FileMode(0o600)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	}
	return atomicfile.Write(path, b, mode)
}

// onlyProfileKeys reports whether a strict-parse error names only keys
// inside profiles (which AdditionalProfileFields keeps).
func onlyProfileKeys(err error) bool {
	msg := err.Error()
	i := strings.Index(msg, "key(s) unrecognized: ")
	if i < 0 {
		return false
	}
	for _, k := range strings.Split(msg[i+len("key(s) unrecognized: "):], ", ") {
		if !strings.HasPrefix(k, "profile.") || strings.Count(k, ".") < 2 {
			return false
		}
	}
	return true
}
