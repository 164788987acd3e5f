module example.com/walletlock

go 1.26.0
