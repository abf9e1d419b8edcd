"""Host-side programs of the SIMULATED lab packages (python3 stdlib, 3.6+): copied into payloads, never
imported by accelstack itself."""
