package loadtest

import (
	"testing"
	"time"

	"example.com/walletlock/lesson"
)

func TestJudge_walletByWallet(t *testing.T) {
	tests := []struct {
		name      string
		accepted  []int64
		balances  []int64
		wantCheck string
		wantOff   int
		wantMoney int64
	}{
		{"every wallet adds up", []int64{3, 0, 10}, []int64{70, 100, 0},
			"accepted=13 balance=170 expected=170 OK", 0, 0},
		// Two spends accepted, one recorded: 10 missing from wallet 0.
		{"a lost update", []int64{2, 1}, []int64{90, 90},
			"accepted=3 balance=180 expected=170 BROKEN", 1, 10},
		{"wallets off both ways", []int64{5, 0, 1}, []int64{80, 90, 90},
			"accepted=6 balance=260 expected=240 BROKEN", 2, 40},
		// The sums agree, the wallets do not: still BROKEN, with both counted.
		{"errors that cancel out in the sum", []int64{1, 1}, []int64{100, 80},
			"accepted=2 balance=180 expected=180 BROKEN", 2, 20},
		// Balances match what was accepted, but one went below zero.
		{"an overdraft", []int64{11}, []int64{-10},
			"accepted=11 balance=-10 expected=-10 BROKEN", 1, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, off, money := judge(100, 10, tt.accepted, tt.balances)
			if v.String() != tt.wantCheck || off != tt.wantOff || money != tt.wantMoney {
				t.Errorf("judge = %q, %d off by %d; want %q, %d off by %d",
					v.String(), off, money, tt.wantCheck, tt.wantOff, tt.wantMoney)
			}
		})
	}
}

func TestFmtMs_threeDigits(t *testing.T) {
	tests := []struct {
		ms   float64
		want string
	}{
		{0.113, "0.113ms"},
		{1, "1.00ms"},
		{4.567, "4.57ms"},
		{78.94, "78.9ms"},
		{1234, "1.23s"},
	}
	for _, tt := range tests {
		if got := fmtMs(tt.ms); got != tt.want {
			t.Errorf("fmtMs(%v) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

func TestFormatMoney_groupsThousands(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {27430, "27,430"}, {1234567, "1,234,567"}, {-1000, "-1,000"},
	}
	for _, tt := range tests {
		if got := formatMoney(tt.n); got != tt.want {
			t.Errorf("formatMoney(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// Every strategy's round trips are counted in the table, and every
// strategy has a phase in package lesson (lesson.Want panics otherwise).
func TestStrategies_matchTheLesson(t *testing.T) {
	for _, s := range strategies {
		if s.trips.Redis+s.trips.Postgres == 0 {
			t.Errorf("%s: no round trips counted", s.name)
		}
		if s.locks && s.trips.Redis == 0 {
			t.Errorf("%s takes a Redis lock but counts no Redis round trip", s.name)
		}
		_ = lesson.Want(Step, s.name)
	}
	if d := Defaults(); time.Duration(len(d.Strategies))*d.Duration > 35*time.Second {
		t.Errorf("the default run takes %v of spending alone; it must stay within about 40 s", time.Duration(len(d.Strategies))*d.Duration)
	}
}
