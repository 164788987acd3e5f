-- The one table of walletlock, made by Open; it touches nothing else.
--   balance  the wallet; the CHECK refuses an overdraft whatever a caller does.
--   fence    the highest fencing token that has claimed the row, 0 for none.
--   version  raised by every write of the balance.
--   owner    the run that set the row up; runs reset and delete only their own.
CREATE TABLE IF NOT EXISTS walletlock_wallets (
    id      bigint PRIMARY KEY,
    balance bigint NOT NULL CHECK (balance >= 0),
    fence   bigint NOT NULL DEFAULT 0,
    version bigint NOT NULL DEFAULT 0,
    owner   text   NOT NULL DEFAULT ''
);
