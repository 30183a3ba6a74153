-- Runs that live for months (issue 16).

-- The version a task needs of the worker that claims it (`<workflow>@<version>` for a run's pass);
-- NULL: any worker of the queue. A worker claims only the tags it has, so a run whose code
-- version no worker has waits instead of failing.
ALTER TABLE tasks ADD COLUMN tag TEXT;

-- Values too big for an event: content-addressed chunks, shared by every value that holds them.
CREATE TABLE blob_chunks (
  hash       TEXT    PRIMARY KEY,
  data       BLOB    NOT NULL,
  size       INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);

-- Who holds a chunk (a run): deleting the owner deletes the chunks no other owner holds.
CREATE TABLE blob_owners (
  owner TEXT NOT NULL,
  hash  TEXT NOT NULL,
  PRIMARY KEY (owner, hash)
) WITHOUT ROWID;
CREATE INDEX blob_owners_hash ON blob_owners (hash);

-- Paused queues (no task of theirs is claimed) and workflows (no pass of their runs is claimed).
CREATE TABLE pauses (
  kind       TEXT    NOT NULL,
  name       TEXT    NOT NULL,
  paused_by  TEXT    NOT NULL,
  reason     TEXT    NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (kind, name)
) WITHOUT ROWID;
