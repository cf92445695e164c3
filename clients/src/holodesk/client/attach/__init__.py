"""`holodesk attach`: lend this desktop to agents that drive it through ComputerService."""
