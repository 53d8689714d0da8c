"""The query flow's stages: retrieve -> rank -> premises -> judge -> threshold -> route -> synthesize -> report."""
