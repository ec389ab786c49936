package ziggurat

// LearnRoute lets the tests of package ziggurat_test give a match a route, as a
// Match.server_address or a MATCH_ELSEWHERE answer would.
func (c *Client) LearnRoute(matchID, address string) { c.learnRoute(matchID, address) }
