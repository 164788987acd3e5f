package wallet_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/wallet"
)

// A wrong setting is one line that says what is wrong and what to do,
// and never shows the password.
func TestConnect_saysWhatIsWrongAndNeverThePassword(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := closed.Addr().String()
	closed.Close() // nothing answers there now
	pem := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(pem, []byte("not a certificate"), 0o600)
	locked := testenv.RedisServer(t, "--requirepass", "s3cretPass") // it runs, and wants a password

	tests := []struct {
		name      string
		env       map[string]string
		wantParts []string
	}{
		{"nothing answers", map[string]string{"REDIS_ADDR": nobody}, []string{nobody, "is it running?", "make up"}},
		{"nothing answers at the URL", map[string]string{"REDIS_URL": "redis://walletlock:s3cret@" + nobody + "/0"}, []string{nobody, "make up"}},
		{"not a URL", map[string]string{"REDIS_URL": "redis://:s3cret@host:po rt/0"}, []string{"REDIS_URL is not a URL", "redis://user:password@host:6379/0"}},
		{"another scheme", map[string]string{"REDIS_URL": "http://walletlock:s3cret@localhost:6379"}, []string{"REDIS_URL", "redis://user:password@host:6379/0"}},
		{"a CA without TLS", map[string]string{"REDIS_CA_FILE": pem}, []string{"REDIS_CA_FILE", "rediss://"}},
		{"a CA with redis://", map[string]string{"REDIS_URL": "redis://walletlock:s3cret@localhost:6379", "REDIS_CA_FILE": pem}, []string{"REDIS_CA_FILE", "rediss://"}},
		{"a CA file of no certificate", map[string]string{"REDIS_URL": "rediss://walletlock:s3cret@localhost:6379", "REDIS_CA_FILE": pem}, []string{"REDIS_CA_FILE", "no PEM certificate"}},
		{"an @ in the password", map[string]string{"REDIS_URL": "redis://walletlock:s3cr@tPass@" + nobody + "/0"}, []string{"more than one @", "%40"}},
		{"a # in the password", map[string]string{"REDIS_URL": "redis://walletlock:s3cr#tPass@" + nobody + "/0"}, []string{"REDIS_URL", "%23"}},
		{"no password for a server that wants one", map[string]string{"REDIS_ADDR": locked}, []string{locked, "NOAUTH", "check the user and password"}},
		{"a wrong password", map[string]string{"REDIS_URL": "redis://:s3cret@" + locked + "/0"}, []string{locked, "WRONGPASS", "check the user and password"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"REDIS_URL", "REDIS_ADDR", "REDIS_CA_FILE"} {
				t.Setenv(k, tt.env[k])
			}
			rdb, err := wallet.Connect(t.Context())
			if err == nil {
				rdb.Close()
			}
			testenv.Refused(t, err, tt.wantParts...)
			if strings.Contains(tt.name, "password") && strings.Contains(err.Error(), "is it running?") {
				t.Errorf("error %q asks whether the server runs: it answered, or was never asked", err)
			}
		})
	}
}

// Several addresses in REDIS_ADDR are the nodes of a Redis Cluster, and a
// URL with addr= parameters names one too.
func TestConnect_aListIsACluster(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := closed.Addr().String()
	closed.Close()
	for _, env := range []map[string]string{
		{"REDIS_ADDR": nobody + "," + nobody},
		{"REDIS_URL": "redis://" + nobody + "?addr=" + nobody},
	} {
		for _, k := range []string{"REDIS_URL", "REDIS_ADDR", "REDIS_CA_FILE"} {
			t.Setenv(k, env[k])
		}
		_, err := wallet.Connect(t.Context())
		if err == nil || !strings.Contains(err.Error(), nobody+","+nobody) {
			t.Errorf("%v: Connect = %v, want an error that names both nodes", env, err)
		}
	}
}
