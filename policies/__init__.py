"""The trainstack CrossGuard policy pack (rules in `policies.rules`, facts in `policies.facts`)."""
