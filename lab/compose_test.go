// The compose file cannot be run where there is no Docker engine, but it
// can be read: this test keeps it in step with what the programs expect.
package walletlock_test

import (
	"net"
	"net/url"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"example.com/walletlock/lab/internal/env"
)

// composeFile is the part of the Compose format this repo relies on.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Profiles    []string          `yaml:"profiles"`
	Ports       []string          `yaml:"ports"`
	Environment map[string]string `yaml:"environment"`
	Healthcheck *struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
		Retries  int      `yaml:"retries"`
	} `yaml:"healthcheck"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	raw, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f
}

func TestComposeFile_services(t *testing.T) {
	f := readCompose(t)
	tests := []struct {
		service string
		image   string
		port    string
		env     map[string]string
		probe   string // the command the healthcheck runs
	}{
		{"redis", "redis:8.10.2", "6379", nil, "redis-cli"},
		{"postgres", "postgres:18", "5432", map[string]string{
			"POSTGRES_USER":     "walletlock",
			"POSTGRES_PASSWORD": "walletlock",
			"POSTGRES_DB":       "walletlock",
		}, "pg_isready"},
	}
	// `make up` starts the services without a profile; the cluster has one.
	always := 0
	for _, s := range f.Services {
		if len(s.Profiles) == 0 {
			always++
		}
	}
	if always != len(tests) {
		t.Errorf("services without a profile = %d, want %d (redis and postgres)", always, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			s, ok := f.Services[tt.service]
			if !ok {
				t.Fatalf("no service %q", tt.service)
			}
			if s.Image != tt.image {
				t.Errorf("image = %q, want %q", s.Image, tt.image)
			}
			// Published on loopback only: a teaching database with a
			// well-known password must not listen on the network.
			want := "127.0.0.1:" + tt.port + ":" + tt.port
			if len(s.Ports) != 1 || s.Ports[0] != want {
				t.Errorf("ports = %q, want [%q]", s.Ports, want)
			}
			for k, v := range tt.env {
				if s.Environment[k] != v {
					t.Errorf("environment %s = %q, want %q", k, s.Environment[k], v)
				}
			}
			// `docker compose up --wait` is only as good as the healthcheck.
			hc := s.Healthcheck
			if hc == nil {
				t.Fatal("no healthcheck")
			}
			if len(hc.Test) < 2 || (hc.Test[0] != "CMD" && hc.Test[0] != "CMD-SHELL") ||
				!strings.Contains(strings.Join(hc.Test[1:], " "), tt.probe) {
				t.Errorf("healthcheck test = %q, want CMD or CMD-SHELL running %s", hc.Test, tt.probe)
			}
			if hc.Interval == "" || hc.Retries < 1 {
				t.Errorf("healthcheck interval %q, retries %d: want both set", hc.Interval, hc.Retries)
			}
		})
	}
}

// The programs' defaults must point at what the compose file publishes.
func TestComposeFile_matchesDefaults(t *testing.T) {
	f := readCompose(t)

	_, port, err := net.SplitHostPort(env.DefaultRedisAddr)
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Services["redis"].Ports; len(p) == 0 || !strings.HasPrefix(p[0], "127.0.0.1:"+port+":") {
		t.Errorf("redis ports %q do not publish the default port %s", p, port)
	}

	u, err := url.Parse(env.DefaultDatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	pg := f.Services["postgres"]
	if p := pg.Ports; len(p) == 0 || !strings.HasPrefix(p[0], "127.0.0.1:"+u.Port()+":") {
		t.Errorf("postgres ports %q do not publish the default port %s", p, u.Port())
	}
	password, _ := u.User.Password()
	for k, want := range map[string]string{
		"POSTGRES_USER":     u.User.Username(),
		"POSTGRES_PASSWORD": password,
		"POSTGRES_DB":       strings.TrimPrefix(u.Path, "/"),
	} {
		if got := pg.Environment[k]; got != want {
			t.Errorf("postgres %s = %q, DefaultDatabaseURL says %q", k, got, want)
		}
	}
}

// The cluster profile publishes the six nodes on loopback, port for port
// (each node announces 127.0.0.1:port to the clients), and is healthy only
// when every node says cluster_state:ok.
func TestComposeFile_cluster(t *testing.T) {
	s, ok := readCompose(t).Services["redis-cluster"]
	if !ok {
		t.Fatal("no service redis-cluster")
	}
	if len(s.Profiles) != 1 || s.Profiles[0] != "cluster" {
		t.Errorf("profiles = %q, want [cluster]: `make up` must not start it", s.Profiles)
	}
	if s.Image != "redis:8.10.2" {
		t.Errorf("image = %q, want the main Redis's, redis:8.10.2", s.Image)
	}
	if want := "127.0.0.1:7001-7006:7001-7006"; len(s.Ports) != 1 || s.Ports[0] != want {
		t.Errorf("ports = %q, want [%q]", s.Ports, want)
	}
	if hc := s.Healthcheck; hc == nil || !strings.Contains(strings.Join(hc.Test, " "), "cluster_state:ok") {
		t.Error("the healthcheck does not wait for cluster_state:ok")
	}
}
