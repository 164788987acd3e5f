package testenv

import (
	"strings"
	"testing"
)

// NoSecret fails the test if output holds any part of secret four bytes
// long or more: a password cut at an unescaped @ or : must not show its
// tail either.
func NoSecret(t testing.TB, output, secret string) {
	t.Helper()
	if frag := secretPart(output, secret); frag != "" {
		t.Errorf("the output shows %q, part of the password:\n%s", frag, output)
	}
}

// NoSecretBeyond is NoSecret for a program that prints description, a
// package's account of a URL: the program itself must add no part of
// secret. The description is the package's to keep clean (package wallet
// tests its own); when it is not, this only logs it, so that a program's
// test holds the program to its part.
func NoSecretBeyond(t testing.TB, output, description, secret string) {
	t.Helper()
	NoSecret(t, strings.ReplaceAll(output, description, ""), secret)
	if frag := secretPart(description, secret); frag != "" {
		t.Logf("the description %q shows %q, part of the password: a bug in the package that wrote it", description, frag)
	}
}

func secretPart(output, secret string) string {
	for i := 0; i+4 <= len(secret); i++ {
		if frag := secret[i : i+4]; strings.Contains(output, frag) {
			return frag
		}
	}
	return ""
}
