-- The one table walletlock keeps in PostgreSQL. OpenStore runs this file, so
-- there is no manual SQL step; it touches nothing else in the database.
--
--   balance  what the wallet holds. The CHECK is the last line of defence:
--            whatever a caller gets wrong, PostgreSQL refuses an overdraft.
--   fence    the highest fencing token that has claimed the row (0: none).
--            Store.Claim raises it; Store.WriteFenced writes only while the
--            row still carries the writer's fence.
--   version  bumped by every balance write; Store.SpendVersioned writes only
--            if it is still the value it read.
--   owner    the run that set the row up (its key prefix, see Store.Owned);
--            a run resets and deletes only rows it owns, so two runs never
--            share or delete each other's wallets. '' is no run in
--            particular (tests, and rows from before the column existed).
CREATE TABLE IF NOT EXISTS walletlock_wallets (
    id      bigint PRIMARY KEY,
    balance bigint NOT NULL CHECK (balance >= 0),
    fence   bigint NOT NULL DEFAULT 0,
    version bigint NOT NULL DEFAULT 0,
    owner   text   NOT NULL DEFAULT ''
);

-- A table from before the owner column gets it. Only then: ALTER TABLE locks
-- the whole table even when the column exists, and would queue every query
-- behind any transaction open on it.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute
                   WHERE attrelid = 'walletlock_wallets'::regclass
                     AND attname = 'owner' AND NOT attisdropped) THEN
        ALTER TABLE walletlock_wallets ADD COLUMN owner text NOT NULL DEFAULT '';
    END IF;
END $$;
