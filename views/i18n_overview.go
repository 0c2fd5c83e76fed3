package views

// overviewText is the text of the overview pages.
var overviewText = text{}
