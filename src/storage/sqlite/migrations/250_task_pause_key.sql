-- A second name a workflow pause holds a task by (issue 47): every stored workflow's executions are runs of the one
-- code workflow `runledger.stored`, so a pause by the tag's workflow would hold all of them. A pass of an execution
-- carries its stored workflow's id here, and the claim refuses it while a pause of kind 'workflow' has that name.
-- Only a filter of the claim (NULL for every other task): the claim reads the same index as before.
ALTER TABLE tasks ADD COLUMN pause_key TEXT;
