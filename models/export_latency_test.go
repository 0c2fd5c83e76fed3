package models

// Kept counts the minutes a LatencyCache keeps.
func (c *LatencyCache) Kept() int {
	c.lock <- struct{}{}
	defer func() { <-c.lock }()
	return len(c.minutes)
}
