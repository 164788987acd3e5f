package judge

// partitioned: the primary cut off from the majority. Not yet on holders.
func partitioned(c *check) (string, string, string) {
	return unknown, "not run: the partition is not judged on holders yet", ""
}
