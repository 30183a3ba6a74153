-- What each live process runs steps with (its allowlist, public URL, model, secret key's identity,
-- version), as JSON text: processes sharing a database warn at start, and `runledger doctor`
-- reports, when these differ, since a step then behaves as whichever process claimed it.
ALTER TABLE processes ADD COLUMN settings text;
